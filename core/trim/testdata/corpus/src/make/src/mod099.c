#include <stdio.h>

int mod099(int x)
{
    return x + 99;
}
