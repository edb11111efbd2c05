#include <stdio.h>

int mod029(int x)
{
    return x + 29;
}
