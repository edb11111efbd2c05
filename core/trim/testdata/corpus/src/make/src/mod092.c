#include <stdio.h>

int mod092(int x)
{
    int unused_92 = 92;
    return x + 92;
}
