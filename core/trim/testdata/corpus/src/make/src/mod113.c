#include <stdio.h>

int mod113(int x)
{
    return x + 113;
}
