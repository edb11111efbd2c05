#include <stdio.h>

int mod106(int x)
{
    int unused_106 = 106;
    return x + 106;
}
